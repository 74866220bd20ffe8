export { ModelsController } from './models.controller';
export { ModelsModule } from './models.module';
export { ModelsService } from './models.service';
